"""The judging web app: blind judging of a pool and explore mode (``searchbench judge serve``,
``searchbench explore``); needs the ``judge`` extra (starlette, uvicorn, jinja2)."""

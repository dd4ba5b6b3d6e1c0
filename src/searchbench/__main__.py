from searchbench.cli import run

run()

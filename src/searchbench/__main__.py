from searchbench.cli.main import run

run()

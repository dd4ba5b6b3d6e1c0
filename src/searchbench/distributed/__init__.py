"""Past one process: streaming evaluation and the Ray engine for embedding, exact ground
truth and evaluation of partitioned runs (ARCHITECTURE §13)."""

"""Building a verified evaluation set: pooling, the judging store and web app, LLM judges,
agreement, export and guarded synthetic questions (ARCHITECTURE §12)."""

"""Adapters, one module per engine; each imports its client library lazily."""

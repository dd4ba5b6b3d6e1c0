"""retrieval layer (see DESIGN.md §1)."""

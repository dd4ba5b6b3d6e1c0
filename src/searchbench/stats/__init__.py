"""stats layer (see DESIGN.md §1)."""

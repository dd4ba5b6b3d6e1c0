"""collections layer (see DESIGN.md §1)."""

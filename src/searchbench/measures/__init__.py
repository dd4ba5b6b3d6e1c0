"""measures layer (see DESIGN.md §1)."""

"""experiment layer (see DESIGN.md §1)."""

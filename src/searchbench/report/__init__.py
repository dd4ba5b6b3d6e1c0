"""report layer (see ARCHITECTURE §1)."""

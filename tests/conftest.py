"""pytest configuration shared by every test folder (helpers live in support.py)."""

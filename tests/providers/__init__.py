"""Provider tests (a package, so its conftest never shadows tests/conftest.py as ``conftest``)."""

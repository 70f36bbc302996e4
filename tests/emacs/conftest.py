"""A real batch Emacs (28 with Debian's elpa-eglot, or 29+) for the clients/emacs tests."""

import pytest

from fake_model import fim  # noqa: F401  (the fixture: the fake model server as llamacpp)
from optional_parts import require_program


@pytest.fixture
def emacs() -> str:
    return require_program("emacs", "emacs", "apt-get install -y emacs-nox elpa-eglot (Debian), or Emacs 29+")

"""Every rule of the contract's factory and `-p NAME` resolution sections (docs/contract.md)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.agent.registry import Config, UnknownProvider, plugin_dirs


def plugin(folder: Path, name: str, source: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(textwrap.dedent(source))


class Recording:
    def __init__(self, **options):
        self.options = options

    def fetch(self, messages, tools, emit):
        pass


def test_stub_is_always_there_and_listed_first():
    config = Config()
    config.provider("zeta", Recording)
    assert config.names()[0] == "stub"
    assert "zeta" in config.names()


def test_factory_is_called_on_every_build_with_model_and_further_options():
    config = Config()
    calls = []
    config.provider("rec", lambda **options: calls.append(options) or Recording(**options))
    first = config.build("rec", model="m1", temperature=0.2)
    second = config.build("rec")
    assert first is not second
    assert calls == [{"model": "m1", "temperature": 0.2}, {}]


def test_zero_argument_factory_ignores_options():
    config = Config()
    config.provider("plain", lambda: Recording())
    assert isinstance(config.build("plain", model="ignored", max_tokens=5), Recording)


def test_factory_with_some_keywords_gets_only_those():
    config = Config()
    config.provider("some", lambda model=None: Recording(model=model))
    assert config.build("some", model="x", temperature=1.0).options == {"model": "x"}


def test_second_registration_replaces_and_names_compare_as_strings():
    class Name:
        def __str__(self):
            return "dup"

    config = Config()
    config.provider("dup", lambda **_: "first")
    config.provider(Name(), lambda **_: "second")
    assert config.build("dup") == "second"


def test_plugins_load_once_home_then_workspace_sorted(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    log = tmp_path / "order.txt"
    for folder, names in ((home / ".agents/plugins", ["b.py", "a.py"]), (workspace / ".agents/plugins", ["a.py"])):
        for name in names:
            plugin(folder, name, f"""
                import elelem_lsp
                open({str(log)!r}, "a").write({str(folder.parent.parent.name + '/' + name)!r} + "\\n")
                elelem_lsp.configure(lambda c: c.provider("who", lambda **_: {str(folder.parent.parent.name)!r}))
            """)
    config = Config(plugin_dirs=plugin_dirs(workspace, include_workspace=True, home=home))
    assert config.build("who") == "ws"  # the workspace's registration came last and replaced home's
    config.build("who")
    assert log.read_text().split() == ["home/a.py", "home/b.py", "ws/a.py"]


def test_workspace_plugins_need_trust(tmp_path):
    workspace = tmp_path / "ws"
    plugin(workspace / ".agents/plugins", "p.py", """
        import elelem_lsp
        elelem_lsp.configure(lambda c: c.provider("local", lambda **_: "x"))
    """)
    untrusted = Config(plugin_dirs=plugin_dirs(workspace, include_workspace=False, home=tmp_path / "h"))
    with pytest.raises(UnknownProvider):
        untrusted.build("local")


def test_broken_plugin_is_reported_by_file_and_others_still_load(tmp_path):
    folder = tmp_path / "plugins"
    plugin(folder, "a_broken.py", "raise RuntimeError('bad plugin')\n")
    plugin(folder, "b_good.py", """
        import elelem_lsp
        elelem_lsp.configure(lambda c: c.provider("good", lambda **_: "ok"))
    """)
    config = Config(plugin_dirs=[folder])
    assert config.build("good") == "ok"
    [failure] = config.failures
    assert failure.path.endswith("a_broken.py") and "RuntimeError: bad plugin" in failure.error


def test_unknown_provider_is_the_contracts_first_error():
    with pytest.raises(UnknownProvider) as error:
        Config().build("nothere")
    assert str(error.value) == 'unknown provider: "nothere". Available: stub. Run: pip install elelem-nothere'


@pytest.fixture
def packages(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("elelem_pkg")]:
        del sys.modules[name]


def test_package_elelem_name_is_imported_and_registers(packages):
    (packages / "elelem_pkgok.py").write_text(textwrap.dedent("""
        import elelem_lsp
        elelem_lsp.configure(lambda c: c.provider("pkgok", lambda **_: "from package"))
    """))
    assert Config().build("pkgok") == "from package"
    assert Config().build("pkgok") == "from package"  # a second workspace gets it too


def test_package_that_registers_another_name(packages):
    (packages / "elelem_pkgother.py").write_text(textwrap.dedent("""
        import elelem_lsp
        elelem_lsp.configure(lambda c: c.provider("different", lambda **_: "x"))
    """))
    with pytest.raises(UnknownProvider, match='^elelem-pkgother did not register a provider named "pkgother"$'):
        Config().build("pkgother")


def test_missing_dependency_inside_the_package_is_shown_as_itself(packages):
    (packages / "elelem_pkgdep.py").write_text("import some_library_that_is_not_installed\n")
    with pytest.raises(ProviderError) as error:
        Config().build("pkgdep")
    assert not isinstance(error.value, UnknownProvider)
    assert "some_library_that_is_not_installed" in str(error.value)


def test_reload_runs_the_plugin_files_again(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as Python runs for most people
    folder = tmp_path / "plugins"
    plugin(folder, "p.py", "import elelem_lsp\nelelem_lsp.configure(lambda c: c.provider('v', lambda **_: 1))\n")
    config = Config(plugin_dirs=[folder])
    assert config.build("v") == 1
    plugin(folder, "p.py", "import elelem_lsp\nelelem_lsp.configure(lambda c: c.provider('v', lambda **_: 2))\n")
    assert config.build("v") == 1  # loaded once
    config.reload()
    assert config.build("v") == 2  # the edit came within the same second and kept the size
    assert not (folder / "__pycache__").exists()  # nothing is left in the person's plugin folder


def test_package_imported_before_resolution_still_registers(packages):
    (packages / "elelem_pkgearly.py").write_text(textwrap.dedent("""
        import elelem_lsp

        @elelem_lsp.configure
        def setup(config):
            config.provider("pkgearly", lambda **_: "early")
    """))
    __import__("elelem_pkgearly")  # imported by something else first
    assert Config().build("pkgearly") == "early"


def test_package_loaded_by_a_plugin_file_serves_every_workspace(packages, tmp_path):
    (packages / "elelem_pkgloader.py").write_text(textwrap.dedent("""
        import elelem_lsp
        elelem_lsp.configure(lambda config: config.provider("other-name", lambda **_: "via plugin"))
    """))
    for workspace in ("one", "two"):  # the contract's one-line plugin that loads a package first
        plugin(tmp_path / workspace / ".agents/plugins", "load.py", "import elelem_pkgloader\n")
    for workspace in ("one", "two"):
        config = Config(plugin_dirs=plugin_dirs(tmp_path / workspace, include_workspace=True, home=tmp_path / "h"))
        assert config.build("other-name") == "via plugin"


def test_an_unknown_provider_names_the_plugin_that_failed_and_where(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".agents" / "plugins"
    plugin(folder, "broken.py", "import elelem_lsp\ndef setup(:\n")
    plugin(folder, "raises.py", "x = 1\n\nraise ValueError('no key')\n")
    with pytest.raises(UnknownProvider) as error:
        Config(plugin_dirs=[folder]).build("mine")
    message = str(error.value)
    assert message.startswith(
        'unknown provider: "mine" (a plugin failed to load: .agents/plugins/broken.py line 2: SyntaxError: '
    )
    assert " (a plugin failed to load: .agents/plugins/raises.py line 3: ValueError: no key). Available: stub" in message
    assert message.endswith("Run: pip install elelem-mine")


def test_a_plugin_failing_inside_a_function_it_calls_is_named_at_its_own_line(tmp_path):
    folder = tmp_path / "plugins"
    plugin(folder, "deep.py", "import json\n\njson.loads('{')\n")
    config = Config(plugin_dirs=[folder])
    config.load_plugins()
    [failure] = config.failures
    assert failure.line == 3 and failure.error.startswith("JSONDecodeError: ")
    assert failure.describe().endswith("deep.py line 3: " + failure.error)


def test_an_unknown_provider_says_workspace_plugins_are_off_when_they_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    skipped = tmp_path / ".agents" / "plugins"
    plugin(skipped, "mine.py", "import elelem_lsp\nelelem_lsp.configure(lambda c: c.provider('mine', lambda **_: 1))\n")
    config = Config(plugin_dirs=[tmp_path / "home-plugins"], skipped_dirs=[skipped])
    with pytest.raises(UnknownProvider) as error:
        config.build("mine")
    message = str(error.value)
    assert "The workspace plugins in .agents/plugins (mine.py) were not loaded: this folder is not trusted" in message
    assert "workspacePlugins" in message and "pip install" not in message


def test_an_empty_skipped_folder_leaves_the_pip_hint(tmp_path):
    (tmp_path / "skipped").mkdir()
    with pytest.raises(UnknownProvider) as error:
        Config(skipped_dirs=[tmp_path / "skipped", tmp_path / "missing"]).build("nothere")
    message = str(error.value)
    assert message.startswith('unknown provider: "nothere". Available: stub')
    assert message.endswith(". Run: pip install elelem-nothere") and "Workspace plugins" not in message

"""A workspace plugin that leaves a mark when it is imported, for the trust tests: the mark
(`.agents/evil-imported`) shows the project's code ran. It registers the provider `evil`."""

from pathlib import Path

import elelem_lsp

(Path(__file__).parent.parent / "evil-imported").write_text("the workspace's plugin ran\n")


class EvilProvider:
    def fetch(self, messages, tools, emit):
        emit({"type": "saying", "text": "evil ran"})


@elelem_lsp.configure
def setup(config):
    config.provider("evil", lambda **_: EvilProvider())

"""Next edit: after a change, the related changes elsewhere in the file, suggested to the editor.

Beside ``completion`` (it shares its settings' shape, its private-file rules and its
cancellation): ``history`` keeps each open document's recent edits from ``didChange``, ``zeta``
writes the prompt in Zeta's published form and reads the rewritten region back, ``predictor``
turns one answer into small edits. The LSP face answers ``elelem/nextEdit`` with them.
"""

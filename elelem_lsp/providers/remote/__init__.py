"""The HTTP providers: model servers reached over the network, one module per wire format.

``http`` holds what every one of them does the same way (client, errors, redaction, SSE and
NDJSON bodies); ``warm`` readies that stack before the first turn. Nothing here is imported
until a provider is built (see ``elelem_lsp.providers.lazy``).
"""

"""The in-process providers: models run on this machine, no server in between.

``generation`` is the token loop and what the providers share, ``tool_text`` the text protocol
of tool calls for models that only write text, ``sentencepiece`` the tokenizer of the models
elelem drives itself. Each provider's optional package (numpy, llama-cpp-python, ctransformers,
candle) is imported only when that provider is built or used.
"""

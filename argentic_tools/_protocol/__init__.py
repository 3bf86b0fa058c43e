"""The wire protocol, shared by both sides: messages, topics, naming rules, validation.

It imports neither the caller side, the tool side nor the transport.
"""

"""Package data: the Lark grammars (`relay.lark`)."""

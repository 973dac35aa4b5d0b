"""One turn of an agent: the request, its context blocks, tool rounds and speech."""

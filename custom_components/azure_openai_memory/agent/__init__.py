"""One turn of an agent or an AI task: routing, the tools offered, the request and its
context blocks, tool rounds, the early and late answer, speech."""

"""Tests of Azure OpenAI Memory."""

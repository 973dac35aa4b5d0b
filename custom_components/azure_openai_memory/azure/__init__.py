"""Everything that speaks to Azure OpenAI; the only package that imports openai."""

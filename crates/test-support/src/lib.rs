//! Test support: a scripted mock model server speaking OpenAI chat completions.

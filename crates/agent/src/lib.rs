//! The agent loop and model clients (OpenAI-compatible chat completions, Anthropic Messages, text-protocol fallback).

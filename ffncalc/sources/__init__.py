"""Where a model comes from: shipped presets, YAML spec files, Hugging Face config.json files."""

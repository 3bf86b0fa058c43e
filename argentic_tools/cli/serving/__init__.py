"""Running things: the embedded broker (`broker`) and tool services (`serve`, `--reload`)."""

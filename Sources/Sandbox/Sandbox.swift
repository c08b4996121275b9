// Sandbox

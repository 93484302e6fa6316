"""The dynamic pass: the only part of ptlint that imports torch, and only in a child process."""

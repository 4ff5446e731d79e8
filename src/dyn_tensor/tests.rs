//! Device-mismatch texts through the real dispatch path, with tensors that claim to be on a GPU
//! (test-only: the check runs before any kernel, so their storage is never touched).

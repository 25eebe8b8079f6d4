//! ferrojit-runtime.

//! Signal-processing helpers beside the FFTs: the window functions (`hann_window`,
//! `hamming_window`, `blackman_window`, `bartlett_window`, `kaiser_window`).

pub mod windows;

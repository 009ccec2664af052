#![doc = include_str!("../README.md")]

#[cfg(feature = "bucket")]
pub mod bucket;
pub mod datadriven;
#[cfg(feature = "kafka-compat")]
pub mod kafka_compat;

#![doc = include_str!("../README.md")]

pub mod datadriven;
#[cfg(feature = "kafka-compat")]
pub mod kafka_compat;

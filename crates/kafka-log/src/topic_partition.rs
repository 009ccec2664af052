//! A partition's name: the topic and the partition number, as a log
//! directory `<topic>-<partition>` and the checkpoint files name it.

use std::fmt;

/// A partition: what a log directory `<topic>-<partition>` holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`-`partition`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// From a log directory name `<topic>-<partition>`.
    pub fn from_dir_name(name: &str) -> Option<Self> {
        crate::naming::parse_partition_dir(name)
            .map(|(topic, partition)| TopicPartition { topic, partition })
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

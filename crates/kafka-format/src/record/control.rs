//! Control records: the single record of a control batch (attribute bit 5).
//!
//! The key is `int16 version (0), int16 type`; for transaction markers
//! (ABORT, COMMIT) the value is `int16 version (0), int32 coordinatorEpoch`.
//! Control batches are read and preserved as they are; deciding what to do
//! with them is the cleaner's business.

use crate::coding::{DecodeError, Reader};

/// The type of a control record (Kafka's `ControlRecordType`; numbers are
/// frozen by the format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ControlRecordType {
    /// A transaction was aborted (0).
    Abort,
    /// A transaction was committed (1).
    Commit,
    /// A KRaft leader change (2).
    LeaderChange,
    /// Start of a KRaft snapshot (3).
    SnapshotHeader,
    /// End of a KRaft snapshot (4).
    SnapshotFooter,
    /// KRaft version record (5).
    KraftVersion,
    /// KRaft voters record (6).
    KraftVoters,
    /// A type this crate does not know, kept as its number.
    Unknown(i16),
}

impl ControlRecordType {
    /// The type's number in the key.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::Unknown(n) => n,
        }
    }

    /// The type with number `id`.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            n => ControlRecordType::Unknown(n),
        }
    }

    /// Parses a control record key (`int16 version, int16 type`). Like
    /// Kafka, a key shorter than 4 bytes is an error; a version other than 0
    /// is read the same way.
    pub fn parse_key(key: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(key);
        let _version = r.i16()?;
        Ok(Self::from_id(r.i16()?))
    }

    /// The 4-byte key of a control record of this type.
    pub fn key(self) -> [u8; 4] {
        let id = self.id().to_be_bytes();
        [0, 0, id[0], id[1]]
    }
}

/// The value of an ABORT or COMMIT control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndTransactionMarker {
    /// The transaction coordinator's epoch.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// Parses the 6-byte value `int16 version (0), int32 coordinatorEpoch`.
    pub fn parse(value: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(value);
        let version = r.i16()?;
        if version < 0 {
            return Err(DecodeError {
                pos: 0,
                message: format!("invalid end transaction marker version {version}"),
            });
        }
        Ok(EndTransactionMarker {
            coordinator_epoch: r.i32()?,
        })
    }

    /// The encoded value (version 0).
    pub fn value(self) -> [u8; 6] {
        let e = self.coordinator_epoch.to_be_bytes();
        [0, 0, e[0], e[1], e[2], e[3]]
    }
}

/// How a transaction ends (Kafka's `TransactionResult`): the marker a
/// coordinator writes.
///
/// Exhaustive on purpose: a transaction commits or aborts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionResult {
    /// A COMMIT marker: the transaction's records become visible to
    /// `read_committed` readers.
    Commit,
    /// An ABORT marker: they never do.
    Abort,
}

impl TransactionResult {
    /// The control record type of the marker.
    pub fn control_type(self) -> ControlRecordType {
        match self {
            TransactionResult::Commit => ControlRecordType::Commit,
            TransactionResult::Abort => ControlRecordType::Abort,
        }
    }
}

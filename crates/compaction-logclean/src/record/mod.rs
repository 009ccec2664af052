//! Kafka's record format: RecordBatch v2 ([`batch`]), the records inside
//! it ([`record`]), control records ([`control`]) and a [`BatchBuilder`]
//! ([`builder`]), and zero-copy record views for the cleaner ([`view`]).

pub mod batch;
pub mod builder;
pub mod control;
#[allow(clippy::module_inception)]
pub mod record;
pub mod view;

pub use batch::{BatchOrigin, BatchPrefix, RecordBatch, TimestampType, compute_crc};
pub use builder::BatchBuilder;
pub use control::{ControlRecordType, EndTransactionMarker};
pub use record::{Header, Record, SimpleRecord};
pub use view::{BatchRecords, RecordView, RecordViews};

//! Kafka's record format: RecordBatch v2 ([`RecordBatch`], built by
//! [`BatchBuilder`]), the records inside it ([`Record`], [`SimpleRecord`],
//! [`Header`]), control records ([`ControlRecordType`],
//! [`EndTransactionMarker`]), and the one record decoder, zero-copy
//! ([`BatchRecords`], [`RecordView`]).

mod batch;
mod builder;
mod control;
pub mod layout;
#[allow(clippy::module_inception)]
mod record;
mod view;

pub use batch::{
    BatchOrigin, BatchPrefix, COMPRESSION_CODEC_MASK, CONTROL_FLAG_MASK, DELETE_HORIZON_FLAG_MASK,
    RecordBatch, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_FLAG_MASK, TimestampType, compute_crc,
};
pub use builder::BatchBuilder;
pub use control::{ControlRecordType, EndTransactionMarker, TransactionResult};
pub use record::{Header, Record, SimpleRecord};
pub use view::{BatchRecords, DecompressedBatch, HeaderView, RecordView, RecordViews};

//! The report and what travels with it: schema, canonical JSON and signatures, the
//! embeddable card, opening shared files, imports of other tools, comparison.

pub mod card;
pub mod card_doc;
pub mod compare;
pub mod import;
pub mod jcs;
pub mod merge;
pub mod report;
pub mod rows;
pub mod series;
pub mod sign;
pub mod trust;
pub mod viewer;

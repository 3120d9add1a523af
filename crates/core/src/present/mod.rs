//! What is shown: pin rows, headline figures with their windows, the metric translator,
//! CSV, and chart geometry as SVG text.

pub mod chart;
pub mod definitions;
pub mod html;
pub mod live;
pub mod view;

//! A partition map drawn in the format asked: one text (HTML, SVG, DOT) or named files (Model
//! Explorer's overlays).

use super::{Map, dot, html, model_explorer, svg};

/// A map drawn in `format`.
pub fn picture(map: &Map<'_>, format: PictureFormat, title: &str) -> Picture {
    match format {
        PictureFormat::Html => Picture::Text(html(map, title)),
        PictureFormat::Svg => Picture::Text(svg(map, title)),
        PictureFormat::Dot => Picture::Text(dot(map, title)),
        PictureFormat::ModelExplorer => Picture::Files(
            model_explorer(map)
                .into_iter()
                .map(|o| {
                    let mut text = serde_json::to_string_pretty(&o.data).unwrap_or_default();
                    text.push('\n');
                    (format!("{}.json", o.name), text)
                })
                .collect(),
        ),
    }
}

/// What `render` draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PictureFormat {
    /// One self-contained HTML page: both overviews, drill-down, buffers, findings.
    Html,
    /// Both overviews as one static SVG.
    Svg,
    /// Graphviz DOT of both overviews.
    Dot,
    /// Model Explorer node data: one file per overlay.
    ModelExplorer,
}

impl std::str::FromStr for PictureFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(PictureFormat::Html),
            "svg" => Ok(PictureFormat::Svg),
            "dot" => Ok(PictureFormat::Dot),
            "model-explorer" => Ok(PictureFormat::ModelExplorer),
            other => Err(format!(
                "unknown picture format {other:?}: html, svg, dot or model-explorer"
            )),
        }
    }
}

/// A picture: one text, or named files (Model Explorer's overlays).
pub enum Picture {
    Text(String),
    Files(Vec<(String, String)>),
}

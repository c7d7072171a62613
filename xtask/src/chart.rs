//! The bar chart of eval reports: our nDCG@10 per mode beside published figures.

use std::path::Path;

use plotters::prelude::*;

/// Draw `ours` (label, nDCG@10) in one colour and `anchors` in another, as an SVG at `path`.
pub fn ndcg_bars(
    path: &Path,
    dataset: &str,
    ours: &[(String, f64)],
    anchors: &[(&str, f64)],
) -> anyhow::Result<()> {
    let bars: Vec<(String, f64, RGBColor)> = ours
        .iter()
        .map(|(label, v)| (label.clone(), *v, RGBColor(31, 119, 180)))
        .chain(
            anchors
                .iter()
                .map(|(label, v)| (label.to_string(), *v, RGBColor(190, 190, 190))),
        )
        .collect();
    let height = 60 + 34 * bars.len() as u32;
    let root = SVGBackend::new(path, (820, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(0.1) * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{dataset}: nDCG@10 (blue: Ferret, grey: published)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(300)
        .build_cartesian_2d(0.0..top, 0.0..bars.len() as f64)?;
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(bars.len() * 2 + 1)
        .y_label_formatter(&|y| {
            // Labels sit at the middle of each bar; other ticks stay empty.
            let slot = (labels.len() as f64 - y - 0.5).round();
            if (y.fract() - 0.5).abs() < 1e-6 && slot >= 0.0 {
                labels[slot as usize].clone()
            } else {
                String::new()
            }
        })
        .x_desc("nDCG@10")
        .draw()?;
    let n = bars.len() as f64;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, v, colour))| {
        let y = n - i as f64;
        Rectangle::new([(0.0, y - 0.85), (*v, y - 0.15)], colour.filled())
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, v, _))| {
        Text::new(
            format!("{v:.3}"),
            (*v + top * 0.01, n - i as f64 - 0.6),
            ("sans-serif", 13),
        )
    }))?;
    root.present()?;
    Ok(())
}

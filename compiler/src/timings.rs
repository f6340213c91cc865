//! How long each stage of a compilation took (`tvc --timings`): where the time of a
//! large library goes, stage by stage.

use std::fmt;
use std::time::{Duration, Instant};

/// Stages in the order they ran; a stage run once per file is summed over the files.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    stages: Vec<(&'static str, Duration)>,
}

impl Timings {
    /// Runs `f`, adding its time to `stage`.
    pub fn time<T>(&mut self, stage: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add(stage, start.elapsed());
        out
    }

    pub fn add(&mut self, stage: &'static str, took: Duration) {
        match self.stages.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, total)) => *total += took,
            None => self.stages.push((stage, took)),
        }
    }

    pub fn stages(&self) -> &[(&'static str, Duration)] {
        &self.stages
    }

    pub fn total(&self) -> Duration {
        self.stages.iter().map(|(_, d)| *d).sum()
    }
}

impl fmt::Display for Timings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total();
        let rows = self.stages.iter().copied().chain([("total", total)]);
        let width = rows.clone().map(|(s, _)| s.len()).max().unwrap_or(0);
        for (stage, took) in rows {
            let share = took.as_secs_f64() / total.as_secs_f64().max(f64::MIN_POSITIVE);
            writeln!(
                f,
                "  {stage:<width$} {:>10.2} ms {:>5.1} %",
                took.as_secs_f64() * 1e3,
                share * 100.0
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_timed_twice_is_one_row_with_the_sum() {
        let mut t = Timings::default();
        t.add("read XML", Duration::from_millis(2));
        t.add("check", Duration::from_millis(5));
        t.add("read XML", Duration::from_millis(3));
        assert_eq!(t.stages().len(), 2);
        assert_eq!(t.stages()[0], ("read XML", Duration::from_millis(5)));
        assert_eq!(t.total(), Duration::from_millis(10));
        let shown = t.to_string();
        assert!(
            shown.contains("read XML") && shown.contains("50.0 %"),
            "{shown}"
        );
        assert!(shown.lines().last().unwrap().contains("total"), "{shown}");
    }
}

use serde::{Deserialize, Serialize};

/// Relevance from which a single hit alone makes the results `high` quality ("directly
/// answers the query"); raised to the good threshold when that is configured higher.
pub const HIGH_RELEVANCE: f32 = 0.75;

/// Thresholds of the grader (by default: keep at 0.3, 0.4 preferred).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GradingConfig {
    /// A hit with relevance at or above this is kept.
    pub keep_threshold: f32,
    /// A kept hit with relevance at or above this is good.
    pub good_threshold: f32,
    /// Good hits needed for the results to be usable (`medium` or better). Values below 1 count
    /// as 1: results with no good hit are always `low`.
    pub min_good_hits: usize,
}

impl Default for GradingConfig {
    fn default() -> Self {
        Self {
            keep_threshold: 0.3,
            good_threshold: 0.4,
            min_good_hits: 1,
        }
    }
}

/// A [`GradingConfig`] that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GradingConfigError {
    /// A threshold is not a number in `0..=1`.
    #[error("grading.{name} must be a number between 0 and 1, got {value}")]
    ThresholdOutOfRange {
        /// The field's name.
        name: &'static str,
        /// The value given.
        value: f32,
    },
    /// The keep threshold is above the good threshold.
    #[error("grading.keep_threshold ({keep}) must not be above grading.good_threshold ({good})")]
    KeepAboveGood {
        /// The keep threshold given.
        keep: f32,
        /// The good threshold given.
        good: f32,
    },
}

impl GradingConfig {
    /// Check the thresholds: both in `0..=1`, keep not above good.
    pub fn validate(&self) -> Result<(), GradingConfigError> {
        for (name, value) in [
            ("keep_threshold", self.keep_threshold),
            ("good_threshold", self.good_threshold),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(GradingConfigError::ThresholdOutOfRange { name, value });
            }
        }
        if self.keep_threshold > self.good_threshold {
            return Err(GradingConfigError::KeepAboveGood {
                keep: self.keep_threshold,
                good: self.good_threshold,
            });
        }
        Ok(())
    }

    /// Is a hit of this relevance kept?
    pub fn is_kept(&self, relevance: f32) -> bool {
        relevance >= self.keep_threshold
    }

    /// Is a hit of this relevance good? Only kept hits are good.
    pub fn is_good(&self, relevance: f32) -> bool {
        self.is_kept(relevance) && relevance >= self.good_threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_thresholds_keep_at_0_3_and_call_good_at_0_4_inclusive() {
        let c = GradingConfig::default();
        assert!(c.validate().is_ok());
        assert!(!c.is_kept(0.29));
        assert!(c.is_kept(0.3));
        assert!(!c.is_good(0.3));
        assert!(c.is_kept(0.39) && !c.is_good(0.39));
        assert!(c.is_good(0.4));
        assert!(!c.is_kept(f32::NAN) && !c.is_good(f32::NAN));
    }

    #[test]
    fn validate_rejects_bad_thresholds() {
        let nan = GradingConfig {
            keep_threshold: f32::NAN,
            ..Default::default()
        };
        assert!(matches!(
            nan.validate(),
            Err(GradingConfigError::ThresholdOutOfRange {
                name: "keep_threshold",
                ..
            })
        ));
        let big = GradingConfig {
            good_threshold: 1.5,
            ..Default::default()
        };
        assert!(matches!(
            big.validate(),
            Err(GradingConfigError::ThresholdOutOfRange {
                name: "good_threshold",
                ..
            })
        ));
        let swapped = GradingConfig {
            keep_threshold: 0.5,
            good_threshold: 0.4,
            ..Default::default()
        };
        assert_eq!(
            swapped.validate(),
            Err(GradingConfigError::KeepAboveGood {
                keep: 0.5,
                good: 0.4
            })
        );
    }

    #[test]
    fn config_deserializes_with_defaults_for_missing_fields() {
        let c: GradingConfig = serde_json::from_str(r#"{"good_threshold": 0.5}"#).unwrap();
        assert_eq!(
            c,
            GradingConfig {
                good_threshold: 0.5,
                ..Default::default()
            }
        );
        assert!(serde_json::from_str::<GradingConfig>(r#"{"good": 0.5}"#).is_err());
    }
}

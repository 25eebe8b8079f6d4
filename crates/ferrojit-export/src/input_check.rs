//! The symbolic part of the input check that `ep.module()` runs before the graph: each
//! symbolic size is unified with the size given, in input order, as torch.export's
//! `_check_input_constraints_for_graph` does.
//!
//! Its rules, which this module keeps:
//! - a size whose expression has one free symbol binds that symbol the first time (a bare
//!   symbol directly; a derived form such as `2*s0` by solving for it, and an error when no
//!   integer solves it), and is compared with the bound value every later time;
//! - an expression that is a key of the range constraints is checked against its range, the
//!   lower bound only when it is above 2: torch.export lets a dimension be 0 or 1 at run
//!   time even when it was exported with a minimum of 2;
//! - an expression of several symbols is left to the runtime assertions in the graph.

use std::collections::{BTreeMap, HashMap};

use crate::error::{ExportError, Result};
use crate::model::RangeConstraint;
use crate::symbolic::{parse_expression, Expression, SymbolicValue};

/// The symbols bound so far from one call's inputs, and the ranges to check them against.
pub struct SizeUnifier {
    ranges: Vec<(Expression, RangeConstraint)>,
    symbols: HashMap<String, SymbolicValue>,
}

fn input_error(input: &str, message: impl Into<String>) -> ExportError {
    ExportError::Input {
        input: input.to_string(),
        message: message.into(),
    }
}

impl SizeUnifier {
    /// Starts a check against `range_constraints` (keys are expression strings).
    pub fn new(range_constraints: &BTreeMap<String, RangeConstraint>) -> Result<SizeUnifier> {
        let mut ranges = Vec::with_capacity(range_constraints.len());
        for (key, range) in range_constraints {
            ranges.push((parse_expression(key)?, *range));
        }
        Ok(SizeUnifier {
            ranges,
            symbols: HashMap::new(),
        })
    }

    /// The symbols bound so far.
    pub fn symbols(&self) -> &HashMap<String, SymbolicValue> {
        &self.symbols
    }

    /// Checks the size `actual` given at `path` (`x.shape[0]`, or an int input's path)
    /// against the program's symbolic size `expression_text`.
    pub fn check(&mut self, expression_text: &str, actual: i64, path: &str) -> Result<()> {
        let expression = parse_expression(expression_text)?;
        let free_symbols = expression.free_symbols();
        match free_symbols.as_slice() {
            [] => {
                if let Some(SymbolicValue::Int(expected)) = expression.evaluate(&self.symbols)? {
                    if expected != actual {
                        return Err(input_error(
                            path,
                            format!("expected to be equal to {expected}, but got {actual}"),
                        ));
                    }
                }
                Ok(())
            }
            [symbol] => {
                if self.symbols.contains_key(symbol) {
                    let expected = expression.evaluate(&self.symbols)?;
                    if expected != Some(SymbolicValue::Int(actual)) {
                        let expected = match expected {
                            Some(SymbolicValue::Int(value)) => value.to_string(),
                            _ => expression_text.to_string(),
                        };
                        return Err(input_error(
                            path,
                            format!("expected to be equal to {expected}, but got {actual}"),
                        ));
                    }
                } else {
                    let solution = match expression.as_symbol() {
                        Some(_) => Some(actual),
                        None => expression.solve_linear(symbol, actual, &self.symbols)?,
                    };
                    let Some(value) = solution else {
                        return Err(input_error(
                            path,
                            format!(
                                "{actual} is not of the form {expression_text}, where {symbol} \
                                 is an integer"
                            ),
                        ));
                    };
                    self.symbols
                        .insert(symbol.clone(), SymbolicValue::Int(value));
                }
                self.check_range(&expression, actual, path)
            }
            // Several symbols: the graph's own runtime assertions check the relation.
            _ => Ok(()),
        }
    }

    fn check_range(&self, expression: &Expression, actual: i64, path: &str) -> Result<()> {
        let Some((_, range)) = self.ranges.iter().find(|(key, _)| key == expression) else {
            return Ok(());
        };
        if let Some(minimum) = range.min_val {
            if minimum > 2 && actual < minimum {
                return Err(input_error(
                    path,
                    format!("expected to be >= {minimum}, but got {actual}"),
                ));
            }
        }
        if let Some(maximum) = range.max_val {
            if actual > maximum {
                return Err(input_error(
                    path,
                    format!("expected to be <= {maximum}, but got {actual}"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(entries: &[(&str, Option<i64>, Option<i64>)]) -> BTreeMap<String, RangeConstraint> {
        entries
            .iter()
            .map(|(key, min_val, max_val)| {
                (
                    key.to_string(),
                    RangeConstraint {
                        min_val: *min_val,
                        max_val: *max_val,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_symbol_binds_once_and_is_compared_after() {
        let mut unifier = SizeUnifier::new(&ranges(&[])).unwrap();
        unifier.check("s0", 5, "x.shape[0]").unwrap();
        unifier.check("s0", 5, "y.shape[0]").unwrap();
        let error = unifier.check("s0", 6, "y.shape[1]").unwrap_err();
        assert_eq!(
            error.to_string(),
            "input y.shape[1]: expected to be equal to 5, but got 6"
        );
        // A derived form of a bound symbol is evaluated.
        unifier.check("2*s0", 10, "z.shape[0]").unwrap();
        assert!(unifier.check("2*s0 + 1", 10, "z.shape[1]").is_err());
    }

    #[test]
    fn a_derived_size_seen_first_is_solved_for_its_symbol() {
        let mut unifier = SizeUnifier::new(&ranges(&[("s0", Some(2), Some(8))])).unwrap();
        unifier.check("2*s0", 8, "x.shape[0]").unwrap();
        assert_eq!(unifier.symbols()["s0"], SymbolicValue::Int(4));
        unifier.check("s0", 4, "y.shape[0]").unwrap();
        let mut unifier = SizeUnifier::new(&ranges(&[])).unwrap();
        let error = unifier.check("2*s0", 7, "x.shape[0]").unwrap_err();
        assert_eq!(
            error.to_string(),
            "input x.shape[0]: 7 is not of the form 2*s0, where s0 is an integer"
        );
        let mut unifier = SizeUnifier::new(&ranges(&[])).unwrap();
        unifier.check("3*s1 - 2", 13, "x.shape[0]").unwrap();
        assert_eq!(unifier.symbols()["s1"], SymbolicValue::Int(5));
    }

    #[test]
    fn ranges_check_the_upper_bound_and_a_lower_bound_above_two() {
        let table = ranges(&[
            ("s0", Some(2), Some(64)),
            ("s1", Some(4), None),
            ("2*s2", Some(4), Some(16)),
        ]);
        // A minimum of 2 still lets 0 and 1 through, as torch.export does.
        SizeUnifier::new(&table)
            .unwrap()
            .check("s0", 1, "x.shape[0]")
            .unwrap();
        let error = SizeUnifier::new(&table)
            .unwrap()
            .check("s0", 65, "x.shape[0]")
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "input x.shape[0]: expected to be <= 64, but got 65"
        );
        let error = SizeUnifier::new(&table)
            .unwrap()
            .check("s1", 3, "x.shape[1]")
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "input x.shape[1]: expected to be >= 4, but got 3"
        );
        // The range of a derived expression, matched by expression, not by spelling.
        let error = SizeUnifier::new(&table)
            .unwrap()
            .check("2 * s2", 18, "x.shape[2]")
            .unwrap_err();
        assert!(error.to_string().contains("<= 16"), "{error}");
    }

    #[test]
    fn several_symbols_are_left_to_the_graph() {
        let mut unifier = SizeUnifier::new(&ranges(&[])).unwrap();
        unifier.check("s0 + s1", 3, "x.shape[0]").unwrap();
        assert!(unifier.symbols().is_empty());
    }
}

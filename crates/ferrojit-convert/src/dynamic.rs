//! Dynamic dimensions (`--dynamic x:0=batch[1,64]`): the named input dimensions become
//! symbols (`s0`, `s1`, ... as torch.export names them, with their ranges in
//! `range_constraints`), and the walk keeps, beside every example value, the symbolic sizes
//! of tensors and the symbolic ints read from them (`aten::sym_size.int`), so the program's
//! metadata and size arguments follow the symbol instead of the example's size.
//!
//! A size is either static or `coefficient * symbol`; what needs more (a sum of a symbol and
//! a constant, a product of two symbols) is refused with an error naming the node.

use std::collections::BTreeMap;

use ferrojit_export::model::{RangeConstraint, SymExpr, SymHint, SymInt};

use crate::error::{ConvertError, Result};

/// One `--dynamic` request: dimension `dim` of the forward argument `input` is `symbol`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicDim {
    pub input: String,
    pub dim: usize,
    /// The user's name of the symbol (`batch`); dims sharing it share one symbol.
    pub symbol: String,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl DynamicDim {
    /// Parses `NAME:DIM=SYMBOL[MIN,MAX]` or `NAME:DIM=SYMBOL` (unbounded).
    pub fn parse(spec: &str) -> Result<DynamicDim> {
        let bad = |why: &str| {
            ConvertError::Input(format!(
                "--dynamic {spec}: {why} (expected NAME:DIM=SYMBOL[MIN,MAX] or NAME:DIM=SYMBOL)"
            ))
        };
        let (target, symbol_part) = spec.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (input, dim) = target.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let dim: usize = dim
            .trim()
            .parse()
            .map_err(|_| bad("DIM is not a dimension number"))?;
        let (symbol, min, max) = match symbol_part.split_once('[') {
            None => (symbol_part, None, None),
            Some((symbol, range)) => {
                let range = range
                    .strip_suffix(']')
                    .ok_or_else(|| bad("the range has no closing ']'"))?;
                let (low, high) = range
                    .split_once(',')
                    .ok_or_else(|| bad("the range needs MIN,MAX"))?;
                let bound = |text: &str| -> Result<Option<i64>> {
                    let text = text.trim();
                    if text.is_empty() || text == "inf" {
                        return Ok(None);
                    }
                    text.parse()
                        .map(Some)
                        .map_err(|_| bad("a bound is not an integer"))
                };
                (symbol, bound(low)?, bound(high)?)
            }
        };
        let symbol = symbol.trim();
        if input.trim().is_empty() || symbol.is_empty() {
            return Err(bad("NAME and SYMBOL must not be empty"));
        }
        if let (Some(low), Some(high)) = (min, max) {
            if low > high {
                return Err(bad("MIN is above MAX"));
            }
        }
        Ok(DynamicDim {
            input: input.trim().to_string(),
            dim,
            symbol: symbol.to_string(),
            min,
            max,
        })
    }
}

/// One dimension's size: static, or `coefficient * symbol` where the symbol's example value
/// is `hint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    Static(i64),
    Symbolic {
        coefficient: i64,
        symbol: String,
        hint: i64,
    },
}

impl Dim {
    /// The size on the example inputs.
    pub fn example(&self) -> i64 {
        match self {
            Dim::Static(value) => *value,
            Dim::Symbolic {
                coefficient, hint, ..
            } => coefficient * hint,
        }
    }

    pub fn is_symbolic(&self) -> bool {
        matches!(self, Dim::Symbolic { .. })
    }

    /// The expression as torch.export writes it (`s0`, `2*s0`).
    pub fn expression(&self) -> String {
        match self {
            Dim::Static(value) => value.to_string(),
            Dim::Symbolic {
                coefficient: 1,
                symbol,
                ..
            } => symbol.clone(),
            Dim::Symbolic {
                coefficient,
                symbol,
                ..
            } => format!("{coefficient}*{symbol}"),
        }
    }

    /// The export schema's SymInt of this size.
    pub fn sym_int(&self) -> SymInt {
        match self {
            Dim::Static(value) => SymInt::Int(*value),
            Dim::Symbolic { .. } => SymInt::Expr(SymExpr {
                expr_str: self.expression(),
                hint: Some(SymHint::Int(self.example())),
            }),
        }
    }

    /// `self * other`, when one of them is static.
    pub fn times(&self, other: &Dim) -> Option<Dim> {
        match (self, other) {
            (Dim::Static(a), Dim::Static(b)) => Some(Dim::Static(a * b)),
            (
                Dim::Static(k),
                Dim::Symbolic {
                    coefficient,
                    symbol,
                    hint,
                },
            )
            | (
                Dim::Symbolic {
                    coefficient,
                    symbol,
                    hint,
                },
                Dim::Static(k),
            ) => Some(if *k == 0 {
                Dim::Static(0)
            } else {
                Dim::Symbolic {
                    coefficient: coefficient * k,
                    symbol: symbol.clone(),
                    hint: *hint,
                }
            }),
            _ => None,
        }
    }

    /// `self // divisor` when it divides exactly (a symbol's multiple by a static that
    /// divides its coefficient, or a multiple of the same symbol).
    pub fn divided_by(&self, divisor: &Dim) -> Option<Dim> {
        match (self, divisor) {
            (Dim::Static(a), Dim::Static(b)) if *b != 0 => Some(Dim::Static(a.div_euclid(*b))),
            (
                Dim::Symbolic {
                    coefficient,
                    symbol,
                    hint,
                },
                Dim::Static(k),
            ) if *k != 0 && coefficient % k == 0 => Some(Dim::Symbolic {
                coefficient: coefficient / k,
                symbol: symbol.clone(),
                hint: *hint,
            }),
            (
                Dim::Symbolic {
                    coefficient: a,
                    symbol: s,
                    ..
                },
                Dim::Symbolic {
                    coefficient: b,
                    symbol: t,
                    ..
                },
            ) if s == t && a % b == 0 => Some(Dim::Static(a / b)),
            _ => None,
        }
    }

    /// `self + other` when both are static or multiples of the same symbol.
    pub fn plus(&self, other: &Dim) -> Option<Dim> {
        match (self, other) {
            (Dim::Static(a), Dim::Static(b)) => Some(Dim::Static(a + b)),
            (
                Dim::Symbolic {
                    coefficient: a,
                    symbol: s,
                    hint,
                },
                Dim::Symbolic {
                    coefficient: b,
                    symbol: t,
                    ..
                },
            ) if s == t => Some(Dim::Symbolic {
                coefficient: a + b,
                symbol: s.clone(),
                hint: *hint,
            }),
            _ => None,
        }
    }
}

/// The product of `dims`, when at most one symbol appears.
pub fn product(dims: &[Dim]) -> Option<Dim> {
    dims.iter()
        .try_fold(Dim::Static(1), |total, dim| total.times(dim))
}

/// The symbols of a program's `--dynamic` requests: user symbol → (`sN`, range), in the
/// order first named.
pub fn symbol_table(dims: &[DynamicDim]) -> Result<Vec<(String, String, RangeConstraint)>> {
    let mut table: Vec<(String, String, RangeConstraint)> = Vec::new();
    for dim in dims {
        let range = RangeConstraint {
            min_val: dim.min,
            max_val: dim.max,
        };
        match table.iter().find(|(user, _, _)| *user == dim.symbol) {
            Some((_, _, known)) if *known != range && (dim.min.is_some() || dim.max.is_some()) => {
                return Err(ConvertError::Input(format!(
                    "--dynamic: symbol '{}' is given two different ranges",
                    dim.symbol
                )))
            }
            Some(_) => {}
            None => {
                let name = format!("s{}", table.len());
                table.push((dim.symbol.clone(), name, range));
            }
        }
    }
    Ok(table)
}

/// The range constraints of the symbols, as torch.export records them: an unbounded
/// dimension is `[2, inf]`, a bounded one keeps its bounds.
pub fn range_constraints(
    table: &[(String, String, RangeConstraint)],
) -> BTreeMap<String, RangeConstraint> {
    table
        .iter()
        .map(|(_, name, range)| {
            (
                name.clone(),
                RangeConstraint {
                    min_val: Some(range.min_val.unwrap_or(2)),
                    max_val: range.max_val,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bounded_and_unbounded_specs() {
        let bounded = DynamicDim::parse("x:0=batch[1,64]").unwrap();
        assert_eq!(bounded.input, "x");
        assert_eq!(bounded.dim, 0);
        assert_eq!(bounded.symbol, "batch");
        assert_eq!((bounded.min, bounded.max), (Some(1), Some(64)));
        let unbounded = DynamicDim::parse("y:2=n").unwrap();
        assert_eq!(
            (unbounded.dim, unbounded.min, unbounded.max),
            (2, None, None)
        );
        for bad in ["x0=b", "x:a=b", "x:0=b[1,2", "x:0=b[5,2]", "x:0=", ":0=b"] {
            let error = DynamicDim::parse(bad).unwrap_err().to_string();
            assert!(error.contains(bad), "{error}");
        }
    }

    #[test]
    fn shared_symbols_get_one_name() {
        let dims = [
            DynamicDim::parse("x:0=batch[2,8]").unwrap(),
            DynamicDim::parse("y:0=batch").unwrap(),
            DynamicDim::parse("y:1=len[2,9]").unwrap(),
        ];
        let table = symbol_table(&dims).unwrap();
        let names: Vec<_> = table
            .iter()
            .map(|(u, n, _)| (u.as_str(), n.as_str()))
            .collect();
        assert_eq!(names, [("batch", "s0"), ("len", "s1")]);
        let conflicting = [
            DynamicDim::parse("x:0=batch[2,8]").unwrap(),
            DynamicDim::parse("y:0=batch[2,9]").unwrap(),
        ];
        assert!(symbol_table(&conflicting).is_err());
    }

    #[test]
    fn arithmetic_keeps_one_symbol_or_refuses() {
        let s = Dim::Symbolic {
            coefficient: 1,
            symbol: "s0".into(),
            hint: 4,
        };
        let doubled = s.times(&Dim::Static(2)).unwrap();
        assert_eq!(doubled.expression(), "2*s0");
        assert_eq!(doubled.example(), 8);
        assert_eq!(doubled.divided_by(&Dim::Static(2)).unwrap(), s);
        assert_eq!(doubled.divided_by(&s).unwrap(), Dim::Static(2));
        assert!(s.divided_by(&Dim::Static(3)).is_none());
        assert!(s.times(&s).is_none());
        assert!(s.plus(&Dim::Static(1)).is_none());
        assert_eq!(s.plus(&s).unwrap(), doubled);
        assert_eq!(
            product(&[Dim::Static(3), s.clone(), Dim::Static(2)])
                .unwrap()
                .expression(),
            "6*s0"
        );
    }
}

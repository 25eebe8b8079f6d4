//! Schema binding: which actual argument (a positional, a keyword, or the schema's default)
//! fills each formal argument of a `FunctionSchema`, with PyTorch's messages when none can.
//!
//! This is the part of PyTorch's `tryMatchSchema` that depends only on the schema and on the
//! shape of the call (how many positionals, which keyword names). Checking the values' types
//! is left to the caller, because each caller has its own notion of a value: the TorchScript
//! compiler binds IR values, the runtime binds `IValue`s when a method is called with fewer
//! arguments, and the Export IR reader binds a node's serialized arguments. Keeping the
//! positional/keyword/default rules in one place keeps their error messages identical.

use crate::schema::{Argument, FunctionSchema};
use crate::types::Type;

/// Where the value of one formal argument comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentSource {
    /// The positional argument at this index.
    Positional(usize),
    /// Every positional argument from this index on, packed into the formal's list
    /// (`x.view(2, 3)` for `view(Tensor self, int[] size)`, PyTorch's
    /// `varargsCanBeUsedAsList`).
    PackedPositionals(usize),
    /// The keyword argument at this index of the call's keywords.
    Keyword(usize),
    /// The schema's default for this formal argument.
    Default,
}

/// The result of binding a call to a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// One source per formal argument bound so far, in schema order. On success there is one
    /// per formal argument.
    pub sources: Vec<ArgumentSource>,
    /// Positional arguments past the schema's last formal, passed through to a vararg schema
    /// (`start..count`); empty otherwise.
    pub extra_positionals: std::ops::Range<usize>,
    /// Why the call does not fit, if it does not. A caller that checks types should check the
    /// `sources` bound before this error first, so that a type mismatch in an earlier argument
    /// is reported before a missing later one, as PyTorch does.
    pub error: Option<BindingError>,
}

/// Why a call cannot be bound to a schema. `Display` gives PyTorch's wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingError {
    /// A formal argument was given both positionally and by keyword.
    SpecifiedTwice { argument: String },
    /// A formal argument without a default was not given.
    NotProvided { argument: String },
    /// More positional arguments than formal arguments, in a non-vararg schema.
    TooManyPositionals { formals: usize, positionals: usize },
    /// A keyword argument that names no formal argument.
    UnknownKeyword { keyword: String },
}

impl std::fmt::Display for BindingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindingError::SpecifiedTwice { argument } => write!(
                f,
                "Argument {argument} specified twice in schema, submit one or the other."
            ),
            BindingError::NotProvided { argument } => {
                write!(f, "Argument {argument} not provided.")
            }
            BindingError::TooManyPositionals {
                formals,
                positionals,
            } => write!(
                f,
                "Expected at most {formals} arguments but found {positionals} positional arguments."
            ),
            BindingError::UnknownKeyword { keyword } => {
                write!(f, "Keyword argument {keyword} unknown.")
            }
        }
    }
}

impl std::error::Error for BindingError {}

impl FunctionSchema {
    /// PyTorch's `varargsCanBeUsedAsList`: may trailing positionals starting at formal
    /// `index` be packed into that formal's list? Only for the last positional formal, of a
    /// list type of unknown length whose element type is not a type variable.
    pub fn varargs_can_be_used_as_list(&self, index: usize) -> bool {
        let Some(argument) = self.arguments.get(index) else {
            return false;
        };
        let is_last = index + 1 == self.arguments.len() || self.arguments[index + 1].kwarg_only;
        let is_list = matches!(argument.ty, Type::List(_));
        let typevar_list =
            matches!(&argument.ty, Type::List(element) if element.has_free_variables());
        is_last && is_list && !typevar_list && argument.list_length.is_none()
    }
}

/// Binds a call with `positional_count` positional arguments and the keyword arguments named
/// `keywords` to `schema`.
///
/// `pack_positionals(index, first)` is asked, for a formal `index` where
/// [`FunctionSchema::varargs_can_be_used_as_list`] holds, whether the positionals from
/// `first` on should be packed into it; the compiler answers from the first positional's type
/// (a value that already is a list is passed as it is). Callers without types pass
/// `|_, _| false`.
pub fn bind_arguments(
    schema: &FunctionSchema,
    positional_count: usize,
    keywords: &[&str],
    mut pack_positionals: impl FnMut(usize, usize) -> bool,
) -> Binding {
    let mut sources = Vec::with_capacity(schema.arguments.len());
    let mut used_positional = 0usize;
    let mut used_keywords = vec![false; keywords.len()];
    let fail = |sources, error| Binding {
        sources,
        extra_positionals: 0..0,
        error: Some(error),
    };
    for (index, argument) in schema.arguments.iter().enumerate() {
        let keyword_index = keywords.iter().position(|name| *name == argument.name);
        if !argument.kwarg_only && used_positional < positional_count {
            if schema.varargs_can_be_used_as_list(index) && pack_positionals(index, used_positional)
            {
                sources.push(ArgumentSource::PackedPositionals(used_positional));
                used_positional = positional_count;
                continue;
            }
            if keyword_index.is_some() {
                return fail(sources, specified_twice(argument));
            }
            sources.push(ArgumentSource::Positional(used_positional));
            used_positional += 1;
        } else if let Some(keyword_index) = keyword_index {
            used_keywords[keyword_index] = true;
            sources.push(ArgumentSource::Keyword(keyword_index));
        } else if argument.default.is_some() {
            sources.push(ArgumentSource::Default);
        } else {
            return fail(
                sources,
                BindingError::NotProvided {
                    argument: argument.name.clone(),
                },
            );
        }
    }
    let mut extra_positionals = 0..0;
    if used_positional < positional_count {
        if schema.is_vararg {
            extra_positionals = used_positional..positional_count;
        } else {
            return fail(
                sources,
                BindingError::TooManyPositionals {
                    formals: schema.arguments.len(),
                    positionals: positional_count,
                },
            );
        }
    }
    if let Some(index) = used_keywords.iter().position(|used| !used) {
        return fail(
            sources,
            BindingError::UnknownKeyword {
                keyword: keywords[index].to_string(),
            },
        );
    }
    Binding {
        sources,
        extra_positionals,
        error: None,
    }
}

fn specified_twice(argument: &Argument) -> BindingError {
    BindingError::SpecifiedTwice {
        argument: argument.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_schema;

    fn bind(schema: &str, positionals: usize, keywords: &[&str]) -> Binding {
        let schema = parse_schema(schema).expect("test schema parses");
        bind_arguments(&schema, positionals, keywords, |_, _| false)
    }

    #[test]
    fn positionals_keywords_and_defaults_fill_the_formals_in_order() {
        let binding = bind(
            "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
            1,
            &["other"],
        );
        assert_eq!(binding.error, None);
        assert_eq!(
            binding.sources,
            vec![
                ArgumentSource::Positional(0),
                ArgumentSource::Keyword(0),
                ArgumentSource::Default
            ]
        );
    }

    #[test]
    fn keyword_only_formals_never_take_positionals() {
        let binding = bind("aten::f(Tensor self, *, int k) -> Tensor", 2, &[]);
        assert_eq!(
            binding.error,
            Some(BindingError::NotProvided {
                argument: "k".to_string()
            })
        );
        assert_eq!(binding.sources, vec![ArgumentSource::Positional(0)]);
    }

    #[test]
    fn errors_use_pytorch_wording() {
        let twice = bind("aten::f(Tensor self, int k) -> Tensor", 2, &["k"]);
        assert_eq!(
            twice.error.map(|e| e.to_string()),
            Some("Argument k specified twice in schema, submit one or the other.".to_string())
        );
        let too_many = bind("aten::f(Tensor self) -> Tensor", 3, &[]);
        assert_eq!(
            too_many.error.map(|e| e.to_string()),
            Some("Expected at most 1 arguments but found 3 positional arguments.".to_string())
        );
        let unknown = bind("aten::f(Tensor self, int k=0) -> Tensor", 1, &["j"]);
        assert_eq!(
            unknown.error.map(|e| e.to_string()),
            Some("Keyword argument j unknown.".to_string())
        );
        let missing = bind("aten::f(Tensor self, int k) -> Tensor", 1, &[]);
        assert_eq!(
            missing.error.map(|e| e.to_string()),
            Some("Argument k not provided.".to_string())
        );
    }

    #[test]
    fn trailing_positionals_pack_into_a_list_only_when_the_caller_agrees() {
        let schema = parse_schema("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
            .expect("schema parses");
        assert!(schema.varargs_can_be_used_as_list(1));
        let packed = bind_arguments(&schema, 3, &[], |index, first| index == 1 && first == 1);
        assert_eq!(packed.error, None);
        assert_eq!(
            packed.sources,
            vec![
                ArgumentSource::Positional(0),
                ArgumentSource::PackedPositionals(1)
            ]
        );
        let not_packed = bind_arguments(&schema, 3, &[], |_, _| false);
        assert!(matches!(
            not_packed.error,
            Some(BindingError::TooManyPositionals { .. })
        ));
    }

    #[test]
    fn vararg_schemas_pass_extra_positionals_through() {
        let binding = bind("prim::Print(...) -> ()", 3, &[]);
        assert_eq!(binding.error, None);
        assert_eq!(binding.extra_positionals, 0..3);
    }
}

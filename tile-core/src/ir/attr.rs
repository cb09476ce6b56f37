//! How an op's attribute values read and print in IR text: one [`Attr`] implementation per
//! attribute type, used by the op table in [`super::ops`] for every op's attributes.

use super::ops::{
    AtomicOp, CmpPred, ConstValue, Evict, MemScope, MemSem, Precision, ReduceKind, ScanKind,
};
use super::parse::{Cursor, ParseError};

/// An attribute value in IR text.
pub(super) trait Attr: Sized {
    /// Written as a bare word right after the op's name (`cmp lt`, `reduce sum`) rather than as
    /// `key = value` in braces.
    const BARE: bool;

    /// A value of the type for an op not yet read (see `OpKind::prototypes`).
    fn placeholder() -> Self;

    /// Appends the value's text.
    fn write(&self, out: &mut String);

    /// Reads the value's text.
    fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError>;
}

impl Attr for u32 {
    const BARE: bool = false;

    fn placeholder() -> Self {
        0
    }

    fn write(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }

    fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError> {
        let col = c.col();
        let v = c.uint()?;
        u32::try_from(v).map_err(|_| c.err_at(col, format!("{v} does not fit in u32")))
    }
}

impl Attr for bool {
    const BARE: bool = false;

    fn placeholder() -> Self {
        false
    }

    fn write(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }

    fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError> {
        let col = c.col();
        match c.ident()?.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            w => Err(c.err_at(col, format!("expected `true` or `false`, found `{w}`"))),
        }
    }
}

impl Attr for i64 {
    const BARE: bool = false;

    fn placeholder() -> Self {
        0
    }

    fn write(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }

    fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError> {
        c.int()
    }
}

impl Attr for [u32; 2] {
    const BARE: bool = false;

    fn placeholder() -> Self {
        [0, 0]
    }

    fn write(&self, out: &mut String) {
        out.push_str(&format!("[{}, {}]", self[0], self[1]));
    }

    fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError> {
        c.expect("[")?;
        let a = u32::read(c)?;
        c.expect(",")?;
        let b = u32::read(c)?;
        c.expect("]")?;
        Ok([a, b])
    }
}

/// A literal as printed: the parser gives it the result's type afterwards (an integer literal of
/// a float constant becomes that float; a float literal of an integer constant is an error).
impl Attr for ConstValue {
    const BARE: bool = true;

    fn placeholder() -> Self {
        ConstValue::Int(0)
    }

    fn write(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }

    fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError> {
        let (text, col) = c.number_literal()?;
        if let Ok(i) = text.parse::<i64>() {
            return Ok(ConstValue::Int(i));
        }
        let x = match text.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            t => t
                .parse::<f64>()
                .map_err(|_| c.err_at(col, format!("bad number `{t}`")))?,
        };
        Ok(ConstValue::Float(x))
    }
}

/// Attributes that are one of a named enum's words.
macro_rules! word_attr {
    ($T:ty, $bare:expr, $what:literal) => {
        impl Attr for $T {
            const BARE: bool = $bare;

            fn placeholder() -> Self {
                <$T>::ALL[0]
            }

            fn write(&self, out: &mut String) {
                out.push_str(self.name());
            }

            fn read(c: &mut Cursor<'_>) -> Result<Self, ParseError> {
                let col = c.col();
                let w = c.ident()?;
                <$T>::from_name(&w).ok_or_else(|| c.err_at(col, format!("unknown {} `{w}`", $what)))
            }
        }
    };
}

word_attr!(CmpPred, true, "comparison");
word_attr!(ReduceKind, true, "reduction");
word_attr!(Precision, false, "precision");
word_attr!(AtomicOp, true, "atomic operation");
word_attr!(MemSem, false, "memory ordering");
word_attr!(MemScope, false, "memory scope");
word_attr!(Evict, false, "eviction hint");
word_attr!(ScanKind, true, "scan");

//! How lithify's options structs are built: `Default::default()` and one
//! chained method per field, named as the field is.
//!
//! Every options struct of the lithify crates is `#[non_exhaustive]`, so a
//! new option never breaks a caller, and has a method per public field
//! that takes the field's type and returns the options:
//!
//! ```
//! use lithify_base::options_builder;
//!
//! /// Options of a widget.
//! #[derive(Debug, Clone, Default)]
//! #[non_exhaustive]
//! pub struct WidgetOptions {
//!     /// How many.
//!     pub count: usize,
//!     /// Its name.
//!     pub name: Option<String>,
//! }
//! options_builder!(WidgetOptions { count: usize, name: Option<String> });
//!
//! let opts = WidgetOptions::default().count(3).name(Some("w".into()));
//! assert_eq!(opts.count, 3);
//! ```
//!
//! The fields stay public: read them, or assign one on a `mut` value.

/// Writes the chained setters of an options struct: for each `field: Type`,
/// `pub fn field(self, value: Type) -> Self`. The struct's fields must be
/// visible where the macro is invoked; a struct with one type parameter or
/// one lifetime is written `Name<C> { ... }` or `Name<'a> { ... }`. See the [module docs](self).
#[macro_export]
macro_rules! options_builder {
    ($ty:ident<$lt:lifetime> { $($field:ident: $fty:ty),* $(,)? }) => {
        impl<$lt> $ty<$lt> {
            $crate::options_builder!(@methods $ty { $($field: $fty),* });
        }
    };
    ($ty:ident<$g:ident> { $($field:ident: $fty:ty),* $(,)? }) => {
        impl<$g> $ty<$g> {
            $crate::options_builder!(@methods $ty { $($field: $fty),* });
        }
    };
    ($ty:ident { $($field:ident: $fty:ty),* $(,)? }) => {
        impl $ty {
            $crate::options_builder!(@methods $ty { $($field: $fty),* });
        }
    };
    (@methods $ty:ident { $($field:ident: $fty:ty),* }) => {
            $(
                #[doc = concat!(
                    "Returns the options with [`", stringify!($field), "`](field@",
                    stringify!($ty), "::", stringify!($field), ") set to `value`."
                )]
                #[must_use]
                pub fn $field(mut self, value: $fty) -> Self {
                    self.$field = value;
                    self
                }
            )*
    };
}

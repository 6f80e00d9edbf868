//! `wire_enum!`: the one way an enum gets its wire name. Each use gives the enum `ALL` (every
//! value, in order), `as_str`, `Display`, and a `FromStr` whose error is the validation message
//! `must be one of: <every name>`, so the names are written once.

macro_rules! wire_enum {
    ($type:ident, [$($variant:ident => $name:literal),* $(,)?]) => {
        impl $type {
            /// Every value, in order.
            pub const ALL: [$type; [$($name),*].len()] = [$($type::$variant),*];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($type::$variant => $name,)*
                }
            }
        }

        impl ::std::str::FromStr for $type {
            /// `must be one of: <every name>`.
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($type::$variant),)*
                    _ => Err(format!("must be one of: {}", [$($name),*].join(", "))),
                }
            }
        }

        impl ::std::fmt::Display for $type {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

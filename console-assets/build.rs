//! Rebuilds the crate when the built console changes. It never runs npm: the console is built
//! by `npm run build` in `console/` (the README's run command does it), and a crate built
//! without it serves a page that says how to build it.

fn main() {
    println!("cargo:rerun-if-changed=../console/dist");
}

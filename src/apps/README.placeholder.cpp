// Module apps: see DESIGN.md. (This file goes away when the module has real sources.)
namespace dnncast {}

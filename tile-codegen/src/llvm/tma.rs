//! Hopper's tensor memory accelerator and its barrier objects: `mbarrier_init`,
//! `mbarrier_expect`, `tma_load`, `mbarrier_wait` and `mbarrier_inval`, all inline PTX.

use tile_core::ir::OpData;

use super::lower::{Lowerer, Result};

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `mbarrier_init`.
    pub(super) fn mbarrier_init(&self, _data: &OpData) -> Result<()> {
        unimplemented!("mbarrier_init")
    }

    /// `mbarrier_expect`.
    pub(super) fn mbarrier_expect(&self, _data: &OpData, _bytes: u32) -> Result<()> {
        unimplemented!("mbarrier_expect")
    }

    /// `tma_load`.
    pub(super) fn tma_load(&self, _data: &OpData, _slot: u32) -> Result<()> {
        unimplemented!("tma_load")
    }

    /// `mbarrier_wait`.
    pub(super) fn mbarrier_wait(&self, _data: &OpData) -> Result<()> {
        unimplemented!("mbarrier_wait")
    }

    /// `mbarrier_inval`.
    pub(super) fn mbarrier_inval(&self, _data: &OpData) -> Result<()> {
        unimplemented!("mbarrier_inval")
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The compatibility headers compile as C++ and allow what C++ plug-ins write: scoped enum
 * names (TF_Code::TF_OK, TF_DataType::TF_FLOAT), structs defined for the opaque handles, and
 * value initialisation followed by the *_STRUCT_SIZE macros. */
#include <cstdio>

#include "layout_checks.h"

struct SP_Stream_st {
    int queue;
};

int main() {
    static_assert(TF_Code::TF_OK == 0, "TF_Code::TF_OK");
    static_assert(TF_DataType::TF_FLOAT == 1, "TF_DataType::TF_FLOAT");
    SP_Stream_st own{7};
    SP_Stream stream = &own;
    SP_Platform platform{};
    platform.struct_size = SP_PLATFORM_STRUCT_SIZE;
    SE_EventStatus status = SE_EVENT_COMPLETE;
    if (stream->queue != 7 || platform.struct_size != 35 || status != 3) {
        std::fprintf(stderr, "C++ view of the compatibility headers differs\n");
        return 1;
    }
    std::printf("compatibility headers: C++ layout ok\n");
    return 0;
}

#include "textflag.h"

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func backdoorIn(ax, bx, cx, dx, si, di uint32) (oax, obx, ocx, odx, osi, odi uint32)
TEXT ·backdoorIn(SB), NOSPLIT, $4-48
	MOVL BP, saved-4(SP)
	MOVL ax+0(FP), AX
	MOVL bx+4(FP), BX
	MOVL cx+8(FP), CX
	MOVL dx+12(FP), DX
	MOVL si+16(FP), SI
	MOVL di+20(FP), DI
	INL
	MOVL AX, oax+24(FP)
	MOVL BX, obx+28(FP)
	MOVL CX, ocx+32(FP)
	MOVL DX, odx+36(FP)
	MOVL SI, osi+40(FP)
	MOVL DI, odi+44(FP)
	MOVL saved-4(SP), BP
	RET
